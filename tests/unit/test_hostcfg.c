/*
 * test_hostcfg.c - one host's training container as a create request (hostcfg.h): the
 * confinement every container gets, the command (SageMaker's "train", the job's entrypoint,
 * the profiler's wrap), /opt/ml and the checkpoint folder, the job's network, a sandbox's
 * namespace, and exactly the host's GPUs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "hostcfg.h"

static void job(struct spec *sp, const char *extra)
{
    char text[2048];
    struct ty_err err;
    json_t *d;

    snprintf(text, sizeof(text),
             "{\"TrainingJobName\":\"job-1\","
             "\"TrainingJobArn\":\"arn:aws:sagemaker:us-east-1:000000000000:training-job/job-1\","
             "\"RoleArn\":\"arn:aws:iam::000000000000:role/R\","
             "\"AlgorithmSpecification\":{\"TrainingImage\":\"img:1\","
             "\"TrainingInputMode\":\"File\"%s},"
             "\"ResourceConfig\":{\"InstanceType\":\"ml.p3.8xlarge\",\"InstanceCount\":2,"
             "\"VolumeSizeInGB\":10},"
             "\"StoppingCondition\":{\"MaxRuntimeInSeconds\":3600},"
             "\"OutputDataConfig\":{\"S3OutputPath\":\"s3://b/out\"},"
             "\"CheckpointConfig\":{\"S3Uri\":\"s3://b/ck\",\"LocalPath\":\"/ckpt\"},"
             "\"TrainingJobStatus\":\"InProgress\"}",
             extra);
    d = json_loads(text, 0, NULL);
    assert_non_null(d);
    assert_int_equal(spec_parse(d, sp, &err), 0);
    json_decref(d);
}

static int has(const char *const *v, const char *s)
{
    for (; v && *v; v++)
        if (strcmp(*v, s) == 0)
            return 1;
    return 0;
}

static void test_confined(void **state)
{
    struct spec sp;
    struct instances_limits lim;
    struct stage_env_opts eo = {.cpus = 32, .gpus = 2, .host = 1, .visible_devices = "2,3"};
    const char *cdi[] = {"nvidia.com/gpu=2", "nvidia.com/gpu=3", NULL}, *ids[] = {"2", "3", NULL};
    struct hostcfg_in in = {0};
    struct hostcfg cfg;
    json_t *labels = json_pack("{s:s}", "trainyard.job", "job-1");
    (void)state;

    job(&sp, "");
    instances_limits(sp.instance_type, 64, 512LL << 30, 8, &lim);
    in.sp = &sp;
    in.lim = &lim;
    in.eo = &eo;
    in.name = "c-algo-2";
    in.hostname = "algo-2";
    in.opt_ml = "/vol/algo-2/ml";
    in.ckpt_dir = "/vol/algo-2/ckpt";
    in.gpu_cdi = cdi;
    in.gpu_ids = ids;
    in.ngpu = 2;
    in.libpod = 1;
    in.seccomp = "/etc/trainyard/seccomp.json";
    in.network = "job-net";
    in.labels = labels;
    assert_int_equal(hostcfg_build(&in, &cfg), 0);
    assert_string_equal(cfg.c.image, "img:1");
    assert_string_equal(cfg.c.name, "c-algo-2");
    assert_string_equal(cfg.c.hostname, "algo-2");
    assert_null(cfg.c.entrypoint);
    assert_string_equal(cfg.c.cmd[0], "train");
    assert_null(cfg.c.cmd[1]);
    /* confinement (docs/job-sandbox.md) */
    assert_int_equal(cfg.c.cap_drop_all, 1);
    assert_ptr_equal(cfg.c.cap_add, instances_caps);
    assert_int_equal(cfg.c.no_new_privileges, 1);
    assert_string_equal(cfg.c.seccomp, "/etc/trainyard/seccomp.json");
    assert_int_equal(cfg.c.readonly_rootfs, 1);
    assert_true(cfg.c.pids_limit == INSTANCES_PIDS_LIMIT);
    assert_true(cfg.c.shm_bytes == lim.shm_bytes && lim.shm_bytes > 0);
    assert_true(strncmp(cfg.c.tmpfs[0], "/tmp:rw,nosuid,nodev,size=", 26) == 0);
    assert_true(strncmp(cfg.c.tmpfs[1], "/var/tmp:rw,nosuid,nodev,size=", 30) == 0);
    assert_string_equal(cfg.c.tmpfs[2], "/run:rw,nosuid,nodev,size=67108864,mode=0755");
    assert_null(cfg.c.tmpfs[3]);
    assert_true(cfg.c.memory_bytes == lim.memory_bytes && cfg.c.nano_cpus == lim.nano_cpus);
    assert_null(cfg.c.userns_mode);
    /* its disk, its checkpoint folder (outside /opt/ml), its network, its GPUs */
    assert_string_equal(cfg.c.binds[0], "/vol/algo-2/ml:/opt/ml");
    assert_string_equal(cfg.c.binds[1], "/vol/algo-2/ckpt:/ckpt");
    assert_null(cfg.c.binds[2]);
    assert_string_equal(cfg.c.network, "job-net");
    assert_string_equal(cfg.c.aliases[0], "algo-2");
    assert_int_equal(cfg.c.network_none, 0);
    assert_ptr_equal(cfg.c.devices, cdi);
    assert_ptr_equal(cfg.c.device_ids, ids);
    assert_int_equal(cfg.c.libpod, 1);
    assert_int_equal(cfg.c.gpus, 0);
    assert_true(has(cfg.c.env, "SM_CURRENT_HOST=algo-2"));
    assert_true(has(cfg.c.env, "NVIDIA_VISIBLE_DEVICES=2,3"));
    assert_ptr_equal(cfg.c.labels, labels);
    hostcfg_free(&cfg);
    spec_cleanup(&sp);
    json_decref(labels);
}

static void test_profiled_sandboxed(void **state)
{
    struct spec sp;
    struct instances_limits lim;
    struct stage_env_opts eo = {0};
    struct hostcfg_in in = {0};
    struct hostcfg cfg;
    (void)state;

    job(&sp, ",\"ContainerEntrypoint\":[\"python\",\"t.py\"],\"ContainerArguments\":[\"-v\"],"
             "\"EnableNetworkIsolation\":false");
    instances_limits(sp.instance_type, 4, 8LL << 30, 0, &lim);
    in.sp = &sp;
    in.lim = &lim;
    in.eo = &eo;
    in.name = "c";
    in.hostname = "algo-1";
    in.opt_ml = "/v";
    in.ckpt_dir = "/c";
    in.typrof = "/usr/local/bin/typrof";
    in.net_sandbox = "sandbox-id";
    in.network = "job-net";
    in.engine_docker = 1;
    assert_int_equal(hostcfg_build(&in, &cfg), 0);
    assert_string_equal(cfg.c.entrypoint[0], "/usr/local/bin/typrof");
    assert_string_equal(cfg.c.entrypoint[1], "run");
    assert_string_equal(cfg.c.entrypoint[2], "--");
    assert_string_equal(cfg.c.entrypoint[3], "python");
    assert_string_equal(cfg.c.entrypoint[4], "t.py");
    assert_null(cfg.c.entrypoint[5]);
    assert_string_equal(cfg.c.cmd[0], "-v");
    assert_string_equal(cfg.c.net_container, "sandbox-id");
    assert_null(cfg.c.hostname);            /* Docker takes the sandbox's */
    assert_int_equal(cfg.c.gpus, lim.gpus); /* no GPU named: the count (none here) */
    assert_null(cfg.c.devices);
    hostcfg_free(&cfg);
    spec_cleanup(&sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_confined),
        cmocka_unit_test(test_profiled_sandboxed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
