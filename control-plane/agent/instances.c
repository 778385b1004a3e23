/*
 * instances.c - the SageMaker instance-type table (every TrainingInstanceType;
 * figures from AWS's instance pages), the host clamp, and the confinement
 * every job container gets (capabilities, pids limit, tmpfs sizes).
 */
#include "instances.h"

#include <stddef.h>
#include <string.h>

#define GIB(x) ((int64_t)((x)*1024.0 * 1024.0 * 1024.0))

/* Every value of TrainingInstanceType's enum (api/sagemaker.json): a type missing here would
   run without memory and CPU limits. */
static const struct instances_type instances_table[] = {
    {"ml.t3.medium", 2, GIB(4), 0},
    {"ml.t3.large", 2, GIB(8), 0},
    {"ml.t3.xlarge", 4, GIB(16), 0},
    {"ml.t3.2xlarge", 8, GIB(32), 0},
    {"ml.m4.xlarge", 4, GIB(16), 0},
    {"ml.m4.2xlarge", 8, GIB(32), 0},
    {"ml.m4.4xlarge", 16, GIB(64), 0},
    {"ml.m4.10xlarge", 40, GIB(160), 0},
    {"ml.m4.16xlarge", 64, GIB(256), 0},
    {"ml.m5.large", 2, GIB(8), 0},
    {"ml.m5.xlarge", 4, GIB(16), 0},
    {"ml.m5.2xlarge", 8, GIB(32), 0},
    {"ml.m5.4xlarge", 16, GIB(64), 0},
    {"ml.m5.12xlarge", 48, GIB(192), 0},
    {"ml.m5.24xlarge", 96, GIB(384), 0},
    {"ml.c4.xlarge", 4, GIB(7.5), 0},
    {"ml.c4.2xlarge", 8, GIB(15), 0},
    {"ml.c4.4xlarge", 16, GIB(30), 0},
    {"ml.c4.8xlarge", 36, GIB(60), 0},
    {"ml.c5.xlarge", 4, GIB(8), 0},
    {"ml.c5.2xlarge", 8, GIB(16), 0},
    {"ml.c5.4xlarge", 16, GIB(32), 0},
    {"ml.c5.9xlarge", 36, GIB(72), 0},
    {"ml.c5.18xlarge", 72, GIB(144), 0},
    {"ml.r5.large", 2, GIB(16), 0},
    {"ml.r5.xlarge", 4, GIB(32), 0},
    {"ml.r5.2xlarge", 8, GIB(64), 0},
    {"ml.g4dn.xlarge", 4, GIB(16), 1},
    {"ml.g4dn.2xlarge", 8, GIB(32), 1},
    {"ml.g4dn.4xlarge", 16, GIB(64), 1},
    {"ml.g4dn.12xlarge", 48, GIB(192), 4},
    {"ml.g5.xlarge", 4, GIB(16), 1},
    {"ml.g5.2xlarge", 8, GIB(32), 1},
    {"ml.g5.4xlarge", 16, GIB(64), 1},
    {"ml.g5.12xlarge", 48, GIB(192), 4},
    {"ml.g5.48xlarge", 192, GIB(768), 8},
    {"ml.p3.2xlarge", 8, GIB(61), 1},
    {"ml.p3.8xlarge", 32, GIB(244), 4},
    {"ml.p3.16xlarge", 64, GIB(488), 8},
    {"ml.p4d.24xlarge", 96, GIB(1152), 8},
    {"ml.p5.48xlarge", 192, GIB(2048), 8},
    {"ml.c5n.xlarge", 4, GIB(10.5), 0},
    {"ml.c5n.2xlarge", 8, GIB(21), 0},
    {"ml.c5n.4xlarge", 16, GIB(42), 0},
    {"ml.c5n.9xlarge", 36, GIB(96), 0},
    {"ml.c5n.18xlarge", 72, GIB(192), 0},
    {"ml.g4dn.8xlarge", 32, GIB(128), 1},
    {"ml.g4dn.16xlarge", 64, GIB(256), 1},
    {"ml.g5.8xlarge", 32, GIB(128), 1},
    {"ml.g5.16xlarge", 64, GIB(256), 1},
    {"ml.g5.24xlarge", 96, GIB(384), 4},
    {"ml.p2.xlarge", 4, GIB(61), 1},
    {"ml.p2.8xlarge", 32, GIB(488), 8},
    {"ml.p2.16xlarge", 64, GIB(732), 16},
    {"ml.p3dn.24xlarge", 96, GIB(768), 8},
    {"ml.trn1.2xlarge", 8, GIB(32), 0},
    {"ml.trn1.32xlarge", 128, GIB(512), 0},
    /* added with the botocore 1.43 model: sixth/seventh-generation CPU families (2, 4 or 8
       GiB per vCPU), G6/G6e/G7/G7e, P4de/P5/P5e/P5en/P6 and Trainium2 (accelerators other than
       NVIDIA GPUs count 0 here, as trn1 does) */
    {"ml.c6i.12xlarge", 48, GIB(96), 0},
    {"ml.c6i.16xlarge", 64, GIB(128), 0},
    {"ml.c6i.24xlarge", 96, GIB(192), 0},
    {"ml.c6i.2xlarge", 8, GIB(16), 0},
    {"ml.c6i.32xlarge", 128, GIB(256), 0},
    {"ml.c6i.4xlarge", 16, GIB(32), 0},
    {"ml.c6i.8xlarge", 32, GIB(64), 0},
    {"ml.c6i.xlarge", 4, GIB(8), 0},
    {"ml.c7i.12xlarge", 48, GIB(96), 0},
    {"ml.c7i.16xlarge", 64, GIB(128), 0},
    {"ml.c7i.24xlarge", 96, GIB(192), 0},
    {"ml.c7i.2xlarge", 8, GIB(16), 0},
    {"ml.c7i.48xlarge", 192, GIB(384), 0},
    {"ml.c7i.4xlarge", 16, GIB(32), 0},
    {"ml.c7i.8xlarge", 32, GIB(64), 0},
    {"ml.c7i.large", 2, GIB(4), 0},
    {"ml.c7i.xlarge", 4, GIB(8), 0},
    {"ml.g6.12xlarge", 48, GIB(192), 4},
    {"ml.g6.16xlarge", 64, GIB(256), 1},
    {"ml.g6.24xlarge", 96, GIB(384), 4},
    {"ml.g6.2xlarge", 8, GIB(32), 1},
    {"ml.g6.48xlarge", 192, GIB(768), 8},
    {"ml.g6.4xlarge", 16, GIB(64), 1},
    {"ml.g6.8xlarge", 32, GIB(128), 1},
    {"ml.g6.xlarge", 4, GIB(16), 1},
    {"ml.g6e.12xlarge", 48, GIB(384), 4},
    {"ml.g6e.16xlarge", 64, GIB(512), 1},
    {"ml.g6e.24xlarge", 96, GIB(768), 4},
    {"ml.g6e.2xlarge", 8, GIB(64), 1},
    {"ml.g6e.48xlarge", 192, GIB(1536), 8},
    {"ml.g6e.4xlarge", 16, GIB(128), 1},
    {"ml.g6e.8xlarge", 32, GIB(256), 1},
    {"ml.g6e.xlarge", 4, GIB(32), 1},
    {"ml.g7.12xlarge", 48, GIB(512), 2},
    {"ml.g7.24xlarge", 96, GIB(1024), 4},
    {"ml.g7.2xlarge", 8, GIB(64), 1},
    {"ml.g7.48xlarge", 192, GIB(2048), 8},
    {"ml.g7.4xlarge", 16, GIB(128), 1},
    {"ml.g7.8xlarge", 32, GIB(256), 1},
    {"ml.g7e.12xlarge", 48, GIB(512), 2},
    {"ml.g7e.24xlarge", 96, GIB(1024), 4},
    {"ml.g7e.2xlarge", 8, GIB(64), 1},
    {"ml.g7e.48xlarge", 192, GIB(2048), 8},
    {"ml.g7e.4xlarge", 16, GIB(128), 1},
    {"ml.g7e.8xlarge", 32, GIB(256), 1},
    {"ml.m6i.12xlarge", 48, GIB(192), 0},
    {"ml.m6i.16xlarge", 64, GIB(256), 0},
    {"ml.m6i.24xlarge", 96, GIB(384), 0},
    {"ml.m6i.2xlarge", 8, GIB(32), 0},
    {"ml.m6i.32xlarge", 128, GIB(512), 0},
    {"ml.m6i.4xlarge", 16, GIB(64), 0},
    {"ml.m6i.8xlarge", 32, GIB(128), 0},
    {"ml.m6i.large", 2, GIB(8), 0},
    {"ml.m6i.xlarge", 4, GIB(16), 0},
    {"ml.m7i.12xlarge", 48, GIB(192), 0},
    {"ml.m7i.16xlarge", 64, GIB(256), 0},
    {"ml.m7i.24xlarge", 96, GIB(384), 0},
    {"ml.m7i.2xlarge", 8, GIB(32), 0},
    {"ml.m7i.48xlarge", 192, GIB(768), 0},
    {"ml.m7i.4xlarge", 16, GIB(64), 0},
    {"ml.m7i.8xlarge", 32, GIB(128), 0},
    {"ml.m7i.large", 2, GIB(8), 0},
    {"ml.m7i.xlarge", 4, GIB(16), 0},
    {"ml.p4de.24xlarge", 96, GIB(1152), 8},
    {"ml.p5.4xlarge", 16, GIB(256), 1},
    {"ml.p5e.48xlarge", 192, GIB(2048), 8},
    {"ml.p5en.48xlarge", 192, GIB(2048), 8},
    {"ml.p6-b200.48xlarge", 192, GIB(2048), 8},
    {"ml.p6-b300.48xlarge", 192, GIB(4096), 8},
    {"ml.p6e-gb200.36xlarge", 144, GIB(960), 4},
    {"ml.r5.12xlarge", 48, GIB(384), 0},
    {"ml.r5.16xlarge", 64, GIB(512), 0},
    {"ml.r5.24xlarge", 96, GIB(768), 0},
    {"ml.r5.4xlarge", 16, GIB(128), 0},
    {"ml.r5.8xlarge", 32, GIB(256), 0},
    {"ml.r5d.12xlarge", 48, GIB(384), 0},
    {"ml.r5d.16xlarge", 64, GIB(512), 0},
    {"ml.r5d.24xlarge", 96, GIB(768), 0},
    {"ml.r5d.2xlarge", 8, GIB(64), 0},
    {"ml.r5d.4xlarge", 16, GIB(128), 0},
    {"ml.r5d.8xlarge", 32, GIB(256), 0},
    {"ml.r5d.large", 2, GIB(16), 0},
    {"ml.r5d.xlarge", 4, GIB(32), 0},
    {"ml.r7i.12xlarge", 48, GIB(384), 0},
    {"ml.r7i.16xlarge", 64, GIB(512), 0},
    {"ml.r7i.24xlarge", 96, GIB(768), 0},
    {"ml.r7i.2xlarge", 8, GIB(64), 0},
    {"ml.r7i.48xlarge", 192, GIB(1536), 0},
    {"ml.r7i.4xlarge", 16, GIB(128), 0},
    {"ml.r7i.8xlarge", 32, GIB(256), 0},
    {"ml.r7i.large", 2, GIB(16), 0},
    {"ml.r7i.xlarge", 4, GIB(32), 0},
    {"ml.trn1n.32xlarge", 128, GIB(512), 0},
    {"ml.trn2.48xlarge", 192, GIB(2048), 0},
};

const char *const instances_caps[] = {"CHOWN",  "DAC_OVERRIDE", "FOWNER", "SETUID",
                                      "SETGID", "KILL",         NULL};

const struct instances_type *instances_lookup(const char *type)
{
    if (!type)
        return NULL;
    for (size_t i = 0; i < sizeof(instances_table) / sizeof(instances_table[0]); i++) {
        if (strcmp(instances_table[i].name, type) == 0)
            return &instances_table[i];
    }
    return NULL;
}

static int64_t instances_clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void instances_limits(const char *type, int host_cpus, int64_t host_memory, int host_gpus,
                      struct instances_limits *lim)
{
    const struct instances_type *t = instances_lookup(type);
    int cpus;
    int64_t mem;

    memset(lim, 0, sizeof(*lim));
    lim->pids_limit = INSTANCES_PIDS_LIMIT;
    lim->tmp_bytes = GIB(1);
    lim->shm_bytes = GIB(1);
    if (!t) {
        lim->cpus = host_cpus > 0 ? host_cpus : 1;
        return;
    }
    lim->known = 1;
    cpus = t->vcpus;
    mem = t->memory_bytes;
    if (host_cpus > 0 && cpus > host_cpus) {
        cpus = host_cpus;
        lim->clamped = 1;
    }
    if (host_memory > 0 && mem > host_memory) {
        mem = host_memory;
        lim->clamped = 1;
    }
    lim->cpus = cpus;
    lim->nano_cpus = (int64_t)cpus * 1000000000LL;
    lim->memory_bytes = mem;
    lim->tmp_bytes = instances_clamp(mem / 4, GIB(0.25), GIB(16));
    lim->shm_bytes = instances_clamp(mem / 2, GIB(0.25), GIB(16));
    if (t->gpus > 0 && host_gpus > 0)
        lim->gpus = t->gpus < host_gpus ? t->gpus : host_gpus;
}
