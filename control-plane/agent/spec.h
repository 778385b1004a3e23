/*
 * spec.h - what a training job asks for, read out of its DescribeTrainingJob document.
 *
 * Owns: the parsing and checking of the members the agent uses (names, image, entrypoint,
 * hyperparameters, resources, stopping condition, output path, environment, channels, metric
 * definitions). A malformed document is an error with a ClientError reason, never a crash.
 * Does not own staging or the container. Not thread-safe per object; parse once, read anywhere.
 */
#ifndef TY_CP_AGENT_SPEC_H
#define TY_CP_AGENT_SPEC_H

#include <jansson.h>

#include "ty_err.h"

#define SPEC_MAX_ARGS 256 /* entries of ContainerEntrypoint / ContainerArguments (AWS: 100) */

struct spec {
    char name[64];              /* TrainingJobName */
    char arn[256];              /* TrainingJobArn, "" when absent */
    char role_arn[2100];        /* RoleArn, "" when absent (for messages) */
    char image[256];            /* AlgorithmSpecification.TrainingImage */
    char input_mode[16];        /* AlgorithmSpecification.TrainingInputMode, "File" by default */
    char instance_type[64];     /* ResourceConfig.InstanceType, "" when absent */
    int instance_count;         /* ResourceConfig.InstanceCount, >= 1 */
    int volume_gb;              /* ResourceConfig.VolumeSizeInGB, 1..16384 (30 when absent) */
    long max_runtime_s;         /* StoppingCondition.MaxRuntimeInSeconds, 0 = none */
    char output_path[1100];     /* OutputDataConfig.S3OutputPath, "" when absent */
    int output_uncompressed;    /* OutputDataConfig.CompressionType NONE */
    char checkpoint_uri[1100];  /* CheckpointConfig.S3Uri, "" when absent */
    char checkpoint_local[512]; /* CheckpointConfig.LocalPath, "/opt/ml/checkpoints" default */
    char profiler_uri[1100];    /* ProfilerConfig.S3OutputPath (default: output_path) unless
                                   DisableProfiler or no ProfilerConfig, else "" */
    int network_isolation;      /* EnableNetworkIsolation */
    char **entrypoint;          /* owned, NULL-terminated; NULL when not given */
    char **arguments;           /* owned, NULL-terminated; NULL when not given */
    json_t *hyperparameters;    /* owned object string -> string ({} when none) */
    json_t *environment;        /* owned object string -> string ({} when none) */
    json_t *channels;           /* owned array of InputDataConfig channels ([] when none) */
    json_t *metric_defs;        /* owned array of {Name, Regex} ([] when none) */
};

/*
 * Fills sp from doc (borrowed). Returns 0, or -TY_EINVAL with err->msg a FailureReason
 * ("ClientError: ..."); sp is cleaned up on failure. Call spec_cleanup() after success.
 */
int spec_parse(json_t *doc, struct spec *sp, struct ty_err *err);
/* Frees what sp owns; sp may be reused. Safe on a zeroed struct. */
void spec_cleanup(struct spec *sp);

#endif
