/*
 * test_agent.c - the agent's pure parts: instance table and host clamp, job spec parsing (and
 * malformed documents), staging JSON (hyperparameters, resourceconfig, inputdataconfig), the
 * container environment, MetricDefinitions extraction, S3 URIs and artifact keys, failure
 * reasons, UTF-8 repair, staging on disk with channel data, and tar.gz round trips.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "artifacts.h"
#include "instances.h"
#include "metricdefs.h"
#include "s3uri.h"
#include "seccomp.h"
#include "spec.h"
#include "stage.h"
#include "ty_fs.h"

#define GIB (1024LL * 1024 * 1024)

static char tmp[256];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static json_t *doc_base(void)
{
    json_error_t je;
    json_t *d = json_loads(
        "{\"TrainingJobName\":\"job-1\","
        "\"TrainingJobArn\":\"arn:aws:sagemaker:us-east-1:000000000000:training-job/job-1\","
        "\"AlgorithmSpecification\":{\"TrainingImage\":\"img:1\",\"TrainingInputMode\":\"File\","
        "\"MetricDefinitions\":[{\"Name\":\"loss\",\"Regex\":\"loss=([0-9.]+)\"}]},"
        "\"HyperParameters\":{\"lr\":\"0.1\",\"epochs\":\"3\",\"sagemaker_program\":\"t.py\","
        "\"name\":\"abc\"},"
        "\"ResourceConfig\":{\"InstanceType\":\"ml.m5.xlarge\",\"InstanceCount\":1,"
        "\"VolumeSizeInGB\":10},"
        "\"StoppingCondition\":{\"MaxRuntimeInSeconds\":3600},"
        "\"OutputDataConfig\":{\"S3OutputPath\":\"s3://b/out\",\"KmsKeyId\":\"\"},"
        "\"Environment\":{\"K\":\"v\",\"SM_NUM_CPUS\":\"99\"},"
        "\"InputDataConfig\":[{\"ChannelName\":\"train\",\"DataSource\":{\"S3DataSource\":"
        "{\"S3Uri\":\"s3://b/data/train\",\"S3DataType\":\"S3Prefix\","
        "\"S3DistributionType\":\"ShardedByS3Key\"}},\"ContentType\":\"text/csv\"},"
        "{\"ChannelName\":\"eval\",\"InputMode\":\"FastFile\",\"DataSource\":{\"S3DataSource\":"
        "{\"S3Uri\":\"s3://b/data/ev\"}}}],"
        "\"TrainingJobStatus\":\"InProgress\",\"SecondaryStatus\":\"Starting\"}",
        0, &je);
    if (!d)
        fprintf(stderr, "json: %s\n", je.text);
    assert_non_null(d);
    return d;
}

static void parse_ok(struct spec *sp)
{
    struct ty_err err;
    json_t *d = doc_base();
    assert_int_equal(spec_parse(d, sp, &err), 0);
    json_decref(d);
}

/* ---- instances ---- */

static void test_instances(void **state)
{
    const struct instances_type *t;
    struct instances_limits l;
    (void)state;

    t = instances_lookup("ml.m5.xlarge");
    assert_non_null(t);
    assert_int_equal(t->vcpus, 4);
    assert_true(t->memory_bytes == 16 * GIB);
    assert_int_equal(t->gpus, 0);
    t = instances_lookup("ml.c4.xlarge");
    assert_non_null(t);
    assert_true(t->memory_bytes == 15 * GIB / 2);
    t = instances_lookup("ml.p4d.24xlarge");
    assert_non_null(t);
    assert_int_equal(t->gpus, 8);
    assert_null(instances_lookup("ml.nope"));
    assert_null(instances_lookup(NULL));

    instances_limits("ml.m5.xlarge", 32, 64 * GIB, 0, &l);
    assert_int_equal(l.known, 1);
    assert_int_equal(l.clamped, 0);
    assert_int_equal(l.cpus, 4);
    assert_true(l.nano_cpus == 4000000000LL);
    assert_true(l.memory_bytes == 16 * GIB);
    assert_int_equal(l.gpus, 0);

    /* A big type on a small host still starts, clamped. */
    instances_limits("ml.m5.4xlarge", 2, 8 * GIB, 0, &l);
    assert_int_equal(l.clamped, 1);
    assert_int_equal(l.cpus, 2);
    assert_true(l.memory_bytes == 8 * GIB);

    /* GPUs only when both the type and the host have them. */
    instances_limits("ml.g5.12xlarge", 64, 512 * GIB, 0, &l);
    assert_int_equal(l.gpus, 0);
    instances_limits("ml.g5.12xlarge", 64, 512 * GIB, 2, &l);
    assert_int_equal(l.gpus, 2);
    instances_limits("ml.m5.large", 64, 512 * GIB, 8, &l);
    assert_int_equal(l.gpus, 0);

    instances_limits("ml.unknown", 6, 8 * GIB, 0, &l);
    assert_int_equal(l.known, 0);
    assert_int_equal(l.cpus, 6);
    assert_true(l.nano_cpus == 0 && l.memory_bytes == 0);
}

/* ---- spec ---- */

static void test_spec_parse(void **state)
{
    struct spec sp;
    (void)state;

    parse_ok(&sp);
    assert_string_equal(sp.name, "job-1");
    assert_string_equal(sp.image, "img:1");
    assert_string_equal(sp.instance_type, "ml.m5.xlarge");
    assert_int_equal(sp.instance_count, 1);
    assert_int_equal(sp.volume_gb, 10);
    assert_int_equal(sp.max_runtime_s, 3600);
    assert_string_equal(sp.output_path, "s3://b/out");
    assert_null(sp.entrypoint);
    assert_null(sp.arguments);
    assert_int_equal(json_array_size(sp.channels), 2);
    assert_int_equal(json_array_size(sp.metric_defs), 1);
    assert_int_equal(sp.network_isolation, 0);
    spec_cleanup(&sp);
    spec_cleanup(&sp); /* idempotent */
}

static void test_spec_entrypoint_and_coercion(void **state)
{
    struct spec sp;
    struct ty_err err;
    json_t *d = doc_base();
    json_t *alg = json_object_get(d, "AlgorithmSpecification");
    (void)state;

    json_object_set_new(alg, "ContainerEntrypoint", json_pack("[s,s]", "python3", "t.py"));
    json_object_set_new(alg, "ContainerArguments", json_pack("[s]", "--x"));
    json_object_set_new(json_object_get(d, "HyperParameters"), "n", json_integer(5));
    json_object_set_new(d, "EnableNetworkIsolation", json_true());
    assert_int_equal(spec_parse(d, &sp, &err), 0);
    assert_string_equal(sp.entrypoint[0], "python3");
    assert_string_equal(sp.entrypoint[1], "t.py");
    assert_null(sp.entrypoint[2]);
    assert_string_equal(sp.arguments[0], "--x");
    assert_string_equal(json_string_value(json_object_get(sp.hyperparameters, "n")), "5");
    assert_int_equal(sp.network_isolation, 1);
    spec_cleanup(&sp);
    json_decref(d);
}

static void expect_bad(json_t *d, const char *want)
{
    struct spec sp;
    struct ty_err err;
    assert_int_equal(spec_parse(d, &sp, &err), -TY_EINVAL);
    assert_non_null(strstr(err.msg, "ClientError"));
    assert_non_null(strstr(err.msg, want));
    json_decref(d);
}

static void test_spec_malformed(void **state)
{
    json_t *d;
    (void)state;

    expect_bad(json_string("x"), "not an object");
    d = doc_base();
    json_object_del(d, "TrainingJobName");
    expect_bad(d, "TrainingJobName");
    d = doc_base();
    json_object_set_new(d, "AlgorithmSpecification", json_integer(1));
    expect_bad(d, "AlgorithmSpecification");
    d = doc_base();
    json_object_del(json_object_get(d, "AlgorithmSpecification"), "TrainingImage");
    expect_bad(d, "TrainingImage");
    d = doc_base();
    json_object_set_new(json_object_get(d, "AlgorithmSpecification"), "ContainerEntrypoint",
                        json_pack("[i]", 3));
    expect_bad(d, "ContainerEntrypoint");
    d = doc_base();
    json_object_set_new(d, "HyperParameters", json_pack("{s:[]}", "x"));
    expect_bad(d, "HyperParameters");
    d = doc_base();
    json_object_set_new(d, "Environment", json_string("x"));
    expect_bad(d, "Environment");
    d = doc_base();
    json_object_set_new(d, "InputDataConfig", json_pack("[{s:s}]", "ChannelName", "../x"));
    expect_bad(d, "ChannelName");
    d = doc_base();
    json_object_set_new(d, "InputDataConfig", json_object());
    expect_bad(d, "InputDataConfig");
    d = doc_base();
    json_object_set_new(d, "ResourceConfig", json_string("big"));
    expect_bad(d, "ResourceConfig");
    /* a checkpoint LocalPath is a plain path: no link trick, no bind option, no system folder */
    {
        static const char *const bad_paths[] = {
            "opt/ml/checkpoints",
            "/opt/ml/code/l4/../x",
            "/opt/ml/./x",
            "/opt/ml//x",
            "/opt/ml/x/",
            "/opt/ml",
            "/",
            "/opt",
            "/proc/self",
            "/sys",
            "/dev/shm",
            "/ckpt:rw",
            "/ckpt,x",
            "/a b",
            "/opt/ml/..",
            "/opt/ml/x\\y",
        };
        for (size_t i = 0; i < sizeof(bad_paths) / sizeof(bad_paths[0]); i++) {
            d = doc_base();
            json_object_set_new(d, "CheckpointConfig",
                                json_pack("{s:s}", "LocalPath", bad_paths[i]));
            expect_bad(d, "LocalPath");
        }
    }
    {
        static const char *const good_paths[] = {"/opt/ml/checkpoints", "/ckpt",
                                                 "/opt/ml/code/run-1.d", "/processed", "/devel"};
        for (size_t i = 0; i < sizeof(good_paths) / sizeof(good_paths[0]); i++) {
            struct spec sp;
            struct ty_err err;
            d = doc_base();
            json_object_set_new(d, "CheckpointConfig",
                                json_pack("{s:s}", "LocalPath", good_paths[i]));
            assert_int_equal(spec_parse(d, &sp, &err), 0);
            assert_string_equal(sp.checkpoint_local, good_paths[i]);
            spec_cleanup(&sp);
            json_decref(d);
        }
    }
}

/* ---- the containers' seccomp profile (seccomp.h) ---- */

/* 1 when rule names name. */
static int rule_names(json_t *rule, const char *name)
{
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(rule, "names"), i, n)
    {
        if (strcmp(json_string_value(n), name) == 0)
            return 1;
    }
    return 0;
}

static void test_seccomp_no_userns(void **state)
{
    json_error_t je;
    json_t *base =
        json_loads("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"defaultErrnoRet\":38,\"archMap\":[],"
                   "\"syscalls\":[{\"names\":[\"read\",\"clone\",\"unshare\",\"clone3\",\"write\"],"
                   "\"action\":\"SCMP_ACT_ALLOW\",\"args\":[]},"
                   "{\"names\":[\"clone\"],\"action\":\"SCMP_ACT_ALLOW\",\"includes\":{\"caps\":"
                   "[\"CAP_SYS_ADMIN\"]}},{\"names\":[\"setns\"],\"action\":\"SCMP_ACT_ERRNO\"}]}",
                   0, &je);
    json_t *out, *calls, *rule;
    struct ty_err err;
    size_t i;
    int allow_cond = 0, deny_cond = 0, clone3_enosys = 0;
    char path[256], outp[300];
    FILE *f;
    (void)state;

    assert_non_null(base);
    out = seccomp_no_userns(base, &err);
    assert_non_null(out);
    /* the base is untouched, the rest of it kept */
    assert_true(rule_names(json_array_get(json_object_get(base, "syscalls"), 0), "unshare"));
    assert_string_equal(json_string_value(json_object_get(out, "defaultAction")), "SCMP_ACT_ERRNO");
    assert_int_equal(json_integer_value(json_object_get(out, "defaultErrnoRet")), 38);
    calls = json_object_get(out, "syscalls");
    json_array_foreach(calls, i, rule)
    {
        json_t *arg = json_array_get(json_object_get(rule, "args"), 0);
        const char *action = json_string_value(json_object_get(rule, "action"));
        if (rule_names(rule, "clone3")) {
            /* only its own rule: ENOSYS, whatever the capabilities */
            assert_string_equal(action, "SCMP_ACT_ERRNO");
            assert_int_equal(json_integer_value(json_object_get(rule, "errnoRet")), 38);
            assert_false(rule_names(rule, "clone"));
            clone3_enosys++;
            continue;
        }
        if (!rule_names(rule, "unshare") && !rule_names(rule, "clone"))
            continue;
        /* every rule that names them is one of ours, on the CLONE_NEWUSER bit of flags */
        assert_true(rule_names(rule, "unshare") && rule_names(rule, "clone"));
        assert_int_equal(json_array_size(json_object_get(rule, "args")), 1);
        assert_int_equal(json_integer_value(json_object_get(arg, "index")), 0);
        assert_int_equal(json_integer_value(json_object_get(arg, "value")), 0x10000000);
        assert_string_equal(json_string_value(json_object_get(arg, "op")), "SCMP_CMP_MASKED_EQ");
        if (strcmp(action, "SCMP_ACT_ALLOW") == 0) {
            assert_int_equal(json_integer_value(json_object_get(arg, "valueTwo")), 0);
            allow_cond++;
        } else {
            assert_string_equal(action, "SCMP_ACT_ERRNO");
            assert_int_equal(json_integer_value(json_object_get(arg, "valueTwo")), 0x10000000);
            assert_int_equal(json_integer_value(json_object_get(rule, "errnoRet")), 1);
            deny_cond++;
        }
    }
    assert_int_equal(allow_cond, 1);
    assert_int_equal(deny_cond, 1);
    assert_int_equal(clone3_enosys, 1);
    assert_true(rule_names(json_array_get(calls, 0), "read"));
    assert_true(rule_names(json_array_get(calls, 0), "write"));
    assert_true(rule_names(json_array_get(calls, 1), "setns")); /* the clone-only rule is gone */
    json_decref(out);

    /* not a profile */
    json_object_set_new(base, "syscalls", json_pack("[{s:s}]", "action", "SCMP_ACT_ALLOW"));
    assert_null(seccomp_no_userns(base, &err));
    assert_non_null(strstr(err.msg, "names"));
    assert_null(seccomp_no_userns(json_object_get(base, "defaultAction"), &err));
    json_decref(base);

    /* the file form: a missing base is ENOTFOUND, a broken one EINVAL, a good one 0644 */
    snprintf(path, sizeof(path), "/tmp/ty-test-seccomp-%d.json", (int)getpid());
    snprintf(outp, sizeof(outp), "%s.out", path);
    unlink(path);
    assert_int_equal(seccomp_write_profile(path, outp, &err), -TY_ENOTFOUND);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"syscalls\": [", f);
    fclose(f);
    assert_int_equal(seccomp_write_profile(path, outp, &err), -TY_EINVAL);
    f = fopen(path, "w");
    fputs("{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":[\"unshare\"],"
          "\"action\":\"SCMP_ACT_ALLOW\"}]}",
          f);
    fclose(f);
    assert_int_equal(seccomp_write_profile(path, outp, &err), 0);
    {
        struct stat st;
        json_t *w = json_load_file(outp, 0, &je);
        assert_non_null(w);
        assert_int_equal(json_array_size(json_object_get(w, "syscalls")), 3);
        json_decref(w);
        assert_int_equal(stat(outp, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0644);
    }
    unlink(path);
    unlink(outp);
}

/* ---- staging JSON and environment ---- */

static void test_stage_json(void **state)
{
    struct spec sp;
    json_t *j, *c;
    char *s;
    (void)state;

    parse_ok(&sp);
    j = stage_hyperparameters_json(&sp);
    assert_string_equal(json_string_value(json_object_get(j, "lr")), "0.1");
    assert_string_equal(json_string_value(json_object_get(j, "epochs")), "3");
    json_decref(j);

    j = stage_resourceconfig_json(&sp, 0);
    s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    assert_string_equal(s, "{\"current_group_name\":\"homogeneousCluster\","
                           "\"current_host\":\"algo-1\",\"current_instance_type\":\"ml.m5.xlarge\","
                           "\"hosts\":[\"algo-1\"],\"instance_groups\":[{\"hosts\":[\"algo-1\"],"
                           "\"instance_group_name\":\"homogeneousCluster\","
                           "\"instance_type\":\"ml.m5.xlarge\"}],"
                           "\"network_interface_name\":\"eth0\"}");
    free(s);
    json_decref(j);

    /* InstanceCount 3: every host lists all three, each names itself */
    sp.instance_count = 3;
    j = stage_resourceconfig_json(&sp, 1);
    s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    assert_non_null(strstr(s, "\"current_host\":\"algo-2\""));
    assert_non_null(strstr(s, "\"hosts\":[\"algo-1\",\"algo-2\",\"algo-3\"]"));
    free(s);
    json_decref(j);
    sp.instance_count = 1;

    j = stage_inputdataconfig_json(&sp);
    c = json_object_get(j, "train");
    assert_string_equal(json_string_value(json_object_get(c, "TrainingInputMode")), "File");
    assert_string_equal(json_string_value(json_object_get(c, "S3DistributionType")),
                        "ShardedByS3Key");
    assert_string_equal(json_string_value(json_object_get(c, "RecordWrapperType")), "None");
    assert_string_equal(json_string_value(json_object_get(c, "ContentType")), "text/csv");
    c = json_object_get(j, "eval");
    assert_string_equal(json_string_value(json_object_get(c, "TrainingInputMode")), "File");
    assert_string_equal(json_string_value(json_object_get(c, "S3DistributionType")),
                        "FullyReplicated");
    assert_null(json_object_get(c, "ContentType"));
    json_decref(j);
    spec_cleanup(&sp);
}

static const char *env_get(char **env, const char *key)
{
    size_t kl = strlen(key);
    for (char **p = env; *p; p++) {
        if (strncmp(*p, key, kl) == 0 && (*p)[kl] == '=')
            return *p + kl + 1;
    }
    return NULL;
}

static void test_stage_env(void **state)
{
    struct spec sp;
    struct stage_env_opts o = {
        .cpus = 4, .gpus = 0, .region = "eu-west-1", .endpoint_url = "http://h:8080"};
    char **env;
    (void)state;

    parse_ok(&sp);
    env = stage_env(&sp, &o);
    assert_non_null(env);
    assert_string_equal(env_get(env, "SM_CURRENT_HOST"), "algo-1");
    assert_string_equal(env_get(env, "SM_HOSTS"), "[\"algo-1\"]");
    assert_string_equal(env_get(env, "SM_MODEL_DIR"), "/opt/ml/model");
    assert_string_equal(env_get(env, "SM_OUTPUT_DATA_DIR"), "/opt/ml/output/data");
    assert_string_equal(env_get(env, "SM_CHANNELS"), "[\"eval\",\"train\"]");
    assert_string_equal(env_get(env, "SM_CHANNEL_TRAIN"), "/opt/ml/input/data/train");
    assert_string_equal(env_get(env, "SM_CHANNEL_EVAL"), "/opt/ml/input/data/eval");
    /* values decoded as JSON where they parse; sagemaker_* left out */
    assert_string_equal(env_get(env, "SM_HPS"), "{\"epochs\":3,\"lr\":0.1,\"name\":\"abc\"}");
    assert_string_equal(env_get(env, "SM_HP_LR"), "0.1");
    assert_null(env_get(env, "SM_HP_SAGEMAKER_PROGRAM"));
    assert_string_equal(env_get(env, "SM_USER_ARGS"),
                        "[\"--epochs\",\"3\",\"--lr\",\"0.1\",\"--name\",\"abc\"]");
    assert_string_equal(env_get(env, "SM_NUM_GPUS"), "0");
    assert_string_equal(env_get(env, "SM_CURRENT_INSTANCE_TYPE"), "ml.m5.xlarge");
    assert_string_equal(env_get(env, "TRAINING_JOB_NAME"), "job-1");
    assert_string_equal(env_get(env, "TRAINING_JOB_ARN"),
                        "arn:aws:sagemaker:us-east-1:000000000000:training-job/job-1");
    assert_string_equal(env_get(env, "AWS_REGION"), "eu-west-1");
    {
        char **env2;
        sp.instance_count = 2;
        o.host = 1;
        env2 = stage_env(&sp, &o);
        assert_string_equal(env_get(env2, "SM_CURRENT_HOST"), "algo-2");
        assert_string_equal(env_get(env2, "SM_HOSTS"), "[\"algo-1\",\"algo-2\"]");
        stage_env_free(env2);
        sp.instance_count = 1;
        o.host = 0;
    }
    assert_string_equal(env_get(env, "S3_ENDPOINT_URL"), "http://h:8080");
    assert_string_equal(env_get(env, "K"), "v");
    /* the job's Environment wins, and appears once */
    assert_string_equal(env_get(env, "SM_NUM_CPUS"), "99");
    {
        int n = 0;
        for (char **p = env; *p; p++)
            n += strncmp(*p, "SM_NUM_CPUS=", 12) == 0;
        assert_int_equal(n, 1);
    }
    stage_env_free(env);
    spec_cleanup(&sp);
}

/* ---- metrics ---- */

static void test_metrics(void **state)
{
    json_t *defs =
        json_pack("[{s:s,s:s},{s:s,s:s},{s:s,s:s},{s:s,s:s}]", "Name", "loss", "Regex",
                  "loss[=:] *([-+0-9.eE]+)", "Name", "acc", "Regex", "acc=([0-9.]+)%", "Name",
                  "broken", "Regex", "([unclosed", "Name", "nogroup", "Regex", "epoch");
    struct metricdefs *m = metricdefs_new(defs);
    json_t *out;
    int changed;
    (void)state;

    assert_non_null(m);
    assert_int_equal(metricdefs_count(m), 3); /* the broken regex is skipped */
    out = metricdefs_final(m, &changed);
    assert_int_equal(json_array_size(out), 0);
    assert_int_equal(changed, 0);
    json_decref(out);

    assert_int_equal(metricdefs_feed(m, "epoch 1 loss=0.75", 17, 1000), 1);
    assert_int_equal(metricdefs_feed(m, "nothing here", 12, 2000), 0);
    assert_int_equal(metricdefs_feed(m, "epoch 2 loss: 2.5e-1 acc=91.5%", 30, 3000), 2);
    assert_int_equal(metricdefs_feed(m, "loss=abc", 8, 4000), 0);
    /* only the first len bytes count */
    assert_int_equal(metricdefs_feed(m, "loss=9 acc=1%", 6, 5000), 1);
    out = metricdefs_final(m, &changed);
    assert_int_equal(changed, 1);
    assert_int_equal(json_array_size(out), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(out, 0), "MetricName")),
                        "loss");
    assert_true(json_real_value(json_object_get(json_array_get(out, 0), "Value")) == 9.0);
    assert_true(json_real_value(json_object_get(json_array_get(out, 0), "Timestamp")) == 5.0);
    assert_true(json_real_value(json_object_get(json_array_get(out, 1), "Value")) == 91.5);
    assert_true(json_real_value(json_object_get(json_array_get(out, 1), "Timestamp")) == 3.0);
    json_decref(out);
    out = metricdefs_final(m, &changed);
    assert_int_equal(changed, 0);
    json_decref(out);
    metricdefs_free(m);
    metricdefs_free(NULL);
    json_decref(defs);

    m = metricdefs_new(NULL);
    assert_non_null(m);
    assert_int_equal(metricdefs_feed(m, "loss=1", 6, 1), 0);
    metricdefs_free(m);
}

/* ---- S3 URIs ---- */

static void test_s3_parse(void **state)
{
    char b[64], k[128];
    (void)state;

    assert_int_equal(s3uri_parse("s3://bucket/a/b/", b, sizeof(b), k, sizeof(k)), 0);
    assert_string_equal(b, "bucket");
    assert_string_equal(k, "a/b/");
    assert_int_equal(s3uri_parse("s3://bucket", b, sizeof(b), k, sizeof(k)), 0);
    assert_string_equal(k, "");
    assert_int_equal(s3uri_parse("s3://my.bucket-1/", b, sizeof(b), k, sizeof(k)), 0);
    assert_string_equal(b, "my.bucket-1");
    assert_int_equal(s3uri_parse("https://b/k", b, sizeof(b), k, sizeof(k)), -TY_EINVAL);
    assert_int_equal(s3uri_parse("s3:///k", b, sizeof(b), k, sizeof(k)), -TY_EINVAL);
    assert_int_equal(s3uri_parse("s3://../k", b, sizeof(b), k, sizeof(k)), -TY_EINVAL);
    assert_int_equal(s3uri_parse("s3://b/a/../../etc", b, sizeof(b), k, sizeof(k)), -TY_EINVAL);
    assert_int_equal(s3uri_parse("s3://b/./x", b, sizeof(b), k, sizeof(k)), -TY_EINVAL);
    assert_int_equal(s3uri_parse("s3://b/..", b, sizeof(b), k, sizeof(k)), -TY_EINVAL);
    assert_int_equal(s3uri_parse("s3://b/a..b/c", b, sizeof(b), k, sizeof(k)), 0);
    assert_int_equal(s3uri_parse("s3://b c/x", b, sizeof(b), k, sizeof(k)), -TY_EINVAL);
    assert_int_equal(s3uri_parse(NULL, b, sizeof(b), k, sizeof(k)), -TY_EINVAL);
    assert_int_equal(s3uri_parse("s3://b/0123456789", b, sizeof(b), k, 4), -TY_EINVAL);

    assert_int_equal(artifacts_output_key("out//", "job", "model.tar.gz", k, sizeof(k)), 0);
    assert_string_equal(k, "out/job/output/model.tar.gz");
    assert_int_equal(artifacts_output_key("", "job", "model.tar.gz", k, sizeof(k)), 0);
    assert_string_equal(k, "job/output/model.tar.gz");
    assert_int_equal(artifacts_output_key("a/b", "j", "output.tar.gz", k, sizeof(k)), 0);
    assert_string_equal(k, "a/b/j/output/output.tar.gz");
    assert_int_equal(artifacts_output_key("a", "job", "model.tar.gz", k, 8), -TY_EINVAL);
}

/* ---- failure reason and UTF-8 ---- */

static void test_failure_reason(void **state)
{
    char dir[320], path[400], buf[2048], big[3000];
    (void)state;

    snprintf(dir, sizeof(dir), "%s/fail", tmp);
    snprintf(path, sizeof(path), "%s/output", dir);
    assert_int_equal(ty_mkdirs(path, 0755), 0);
    assert_int_equal(stage_read_failure(dir, buf, sizeof(buf)), 0);
    snprintf(path, sizeof(path), "%s/output/failure", dir);
    write_file(path, "ValueError: bad lr\n\n");
    assert_int_equal(stage_read_failure(dir, buf, sizeof(buf)), 1);
    assert_string_equal(buf, "ValueError: bad lr");
    write_file(path, "  \n");
    assert_int_equal(stage_read_failure(dir, buf, sizeof(buf)), 0);
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    write_file(path, big);
    assert_int_equal(stage_read_failure(dir, buf, sizeof(buf)), 1);
    assert_int_equal(strlen(buf), 1024);
    assert_int_equal(stage_read_failure(dir, buf, 10), 1);
    assert_string_equal(buf, "xxxxxxxxx");
    write_file(path, "bad \xff\xfe bytes \xe2\x82");
    assert_int_equal(stage_read_failure(dir, buf, sizeof(buf)), 1);
    assert_string_equal(buf, "bad ?? bytes ??");
}

static void test_utf8_fix(void **state)
{
    char s1[] = "ok \xc3\xa9 \xf0\x9f\x98\x80 end";
    char s2[] = "a\xc0\xafz\xed\xa0\x80!";
    char s3[] = {'a', '\0', 'b'};
    (void)state;

    stage_utf8_fix(s1, strlen(s1));
    assert_string_equal(s1, "ok \xc3\xa9 \xf0\x9f\x98\x80 end");
    stage_utf8_fix(s2, strlen(s2));
    assert_string_equal(s2, "a??z??\?!");
    stage_utf8_fix(s3, 3);
    assert_memory_equal(s3, "a?b", 3);
}

/* ---- staging on disk ---- */

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static void test_stage_prepare(void **state)
{
    struct spec sp;
    struct ty_err err;
    char s3[320], dir[320], p[512], buf[64];
    struct stat st;
    FILE *f;
    json_t *j;
    (void)state;

    snprintf(s3, sizeof(s3), "%s/s3", tmp);
    snprintf(dir, sizeof(dir), "%s/jobs/job-1/algo-1", tmp);
    snprintf(p, sizeof(p), "%s/b/data/train/sub", s3);
    assert_int_equal(ty_mkdirs(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/b/data/train/x.csv", s3);
    write_file(p, "1,2\n");
    snprintf(p, sizeof(p), "%s/b/data/train/sub/y.csv", s3);
    write_file(p, "3,4\n");
    snprintf(p, sizeof(p), "%s/b/data/evaluation.csv", s3); /* prefix "ev" */
    write_file(p, "5\n");
    snprintf(p, sizeof(p), "%s/b/data/other.csv", s3);
    write_file(p, "6\n");
    /* a leftover from a previous run is removed */
    snprintf(p, sizeof(p), "%s/model", dir);
    assert_int_equal(ty_mkdirs(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/model/stale", dir);
    write_file(p, "old");

    parse_ok(&sp);
    assert_int_equal(stage_prepare(dir, &sp, 0, s3, &err), 0);
    assert_false(exists(p));
    snprintf(p, sizeof(p), "%s/model", dir);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0777);
    snprintf(p, sizeof(p), "%s/output/data", dir);
    assert_true(exists(p));
    snprintf(p, sizeof(p), "%s/code", dir);
    assert_true(exists(p));
    snprintf(p, sizeof(p), "%s/checkpoints", dir);
    assert_true(exists(p));
    snprintf(p, sizeof(p), "%s/input/data/train/x.csv", dir);
    f = fopen(p, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    assert_string_equal(buf, "1,2\n");
    snprintf(p, sizeof(p), "%s/input/data/train/sub/y.csv", dir);
    assert_true(exists(p));
    snprintf(p, sizeof(p), "%s/input/data/eval/evaluation.csv", dir);
    assert_true(exists(p));
    snprintf(p, sizeof(p), "%s/input/data/eval/other.csv", dir);
    assert_false(exists(p));
    snprintf(p, sizeof(p), "%s/input/config/hyperparameters.json", dir);
    j = json_load_file(p, 0, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "lr")), "0.1");
    json_decref(j);
    snprintf(p, sizeof(p), "%s/input/config/resourceconfig.json", dir);
    j = json_load_file(p, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "current_host")), "algo-1");
    json_decref(j);
    snprintf(p, sizeof(p), "%s/input/config/inputdataconfig.json", dir);
    j = json_load_file(p, 0, NULL);
    assert_non_null(json_object_get(j, "train"));
    json_decref(j);

    /* a channel with no local data is left empty */
    snprintf(p, sizeof(p), "%s/b", s3);
    assert_int_equal(stage_remove(p), 0);
    assert_int_equal(stage_prepare(dir, &sp, 0, s3, &err), 0);
    snprintf(p, sizeof(p), "%s/input/data/train/x.csv", dir);
    assert_false(exists(p));
    snprintf(p, sizeof(p), "%s/input/data/train", dir);
    assert_true(exists(p));
    assert_int_equal(stage_remove(dir), 0);
    assert_false(exists(dir));
    assert_int_equal(stage_remove(dir), 0);
    spec_cleanup(&sp);
}

/* ---- tar.gz ---- */

static void test_targz_round_trip(void **state)
{
    char src[320], dest[400], p[512];
    struct archive *ar;
    struct archive_entry *e;
    struct ty_err err;
    char *big;
    const size_t big_n = 3 * 1024 * 1024 + 17;
    int seen = 0;
    (void)state;

    snprintf(src, sizeof(src), "%s/model", tmp);
    snprintf(p, sizeof(p), "%s/dir/deeper", src);
    assert_int_equal(ty_mkdirs(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/a.txt", src);
    write_file(p, "alpha");
    snprintf(p, sizeof(p), "%s/dir/deeper/b.bin", src);
    big = malloc(big_n);
    assert_non_null(big);
    for (size_t i = 0; i < big_n; i++)
        big[i] = (char)(i * 7 + i / 1000);
    {
        FILE *f = fopen(p, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(big, 1, big_n, f), big_n);
        fclose(f);
    }
    snprintf(p, sizeof(p), "%s/link", src);
    assert_int_equal(symlink("a.txt", p), 0);

    snprintf(dest, sizeof(dest), "%s/s3/bk/out/job/output/model.tar.gz", tmp);
    assert_int_equal(artifacts_targz(tmp, "model", dest, &err), 0);

    ar = archive_read_new();
    archive_read_support_filter_gzip(ar);
    archive_read_support_format_tar(ar);
    assert_int_equal(archive_read_open_filename(ar, dest, 16384), ARCHIVE_OK);
    while (archive_read_next_header(ar, &e) == ARCHIVE_OK) {
        const char *name = archive_entry_pathname(e);
        if (strcmp(name, "a.txt") == 0) {
            char buf[16] = {0};
            assert_int_equal(archive_read_data(ar, buf, sizeof(buf)), 5);
            assert_string_equal(buf, "alpha");
            seen |= 1;
        } else if (strcmp(name, "dir/deeper/b.bin") == 0) {
            char *got = malloc(big_n);
            size_t off = 0;
            ssize_t r;
            assert_non_null(got);
            assert_int_equal(archive_entry_size(e), big_n);
            while ((r = archive_read_data(ar, got + off, big_n - off)) > 0)
                off += (size_t)r;
            assert_int_equal(off, big_n);
            assert_memory_equal(got, big, big_n);
            free(got);
            seen |= 2;
        } else if (strcmp(name, "link") == 0) {
            assert_string_equal(archive_entry_symlink(e), "a.txt");
            seen |= 4;
        } else if (strcmp(name, "dir/") == 0 || strcmp(name, "dir/deeper/") == 0) {
            assert_int_equal(archive_entry_filetype(e), AE_IFDIR);
            seen |= 8;
        } else {
            print_error("unexpected entry '%s'\n", name);
            fail();
        }
    }
    assert_int_equal(archive_read_free(ar), ARCHIVE_OK);
    assert_int_equal(seen, 15);
    free(big);

    /* no temp file left beside it; a missing source gives an empty archive */
    assert_int_equal(artifacts_targz(tmp, "none", dest, &err), 0);
    ar = archive_read_new();
    archive_read_support_filter_gzip(ar);
    archive_read_support_format_tar(ar);
    assert_int_equal(archive_read_open_filename(ar, dest, 16384), ARCHIVE_OK);
    assert_int_equal(archive_read_next_header(ar, &e), ARCHIVE_EOF);
    archive_read_free(ar);
    snprintf(p, sizeof(p), "ls %s/s3/bk/out/job/output | grep -q tmp", tmp);
    assert_int_not_equal(system(p), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_instances),
        cmocka_unit_test(test_spec_parse),
        cmocka_unit_test(test_spec_entrypoint_and_coercion),
        cmocka_unit_test(test_spec_malformed),
        cmocka_unit_test(test_seccomp_no_userns),
        cmocka_unit_test(test_stage_json),
        cmocka_unit_test(test_stage_env),
        cmocka_unit_test(test_metrics),
        cmocka_unit_test(test_s3_parse),
        cmocka_unit_test(test_failure_reason),
        cmocka_unit_test(test_utf8_fix),
        cmocka_unit_test(test_stage_prepare),
        cmocka_unit_test(test_targz_round_trip),
    };
    int rc;

    snprintf(tmp, sizeof(tmp), "/tmp/ty-test-agent-XXXXXX");
    if (!mkdtemp(tmp))
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    stage_remove(tmp);
    return rc;
}
